"""The whole stack on one machine (``profilerhub up``): hub, worker and beat as supervised child
processes, with an embedded Redis. It sits above the hub, the worker and the app and runs them as
processes; of their code it imports only the worker's exit step (``profilerhub_worker.local_apps``)."""
