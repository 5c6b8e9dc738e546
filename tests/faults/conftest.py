"""The fault suite's fixtures: the CPU hog (``PROFILERHUB_FAULTS_CPU_HOG=1`` runs it beside every test)
and a small disk to fill."""

from tests.faults.faults import _cpu_hog_when_asked, cpu_hog, small_disk  # noqa: F401  (fixtures)
