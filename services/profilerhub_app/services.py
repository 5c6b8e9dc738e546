"""What one app process is wired from: :class:`AppServices`, built once by ``create_app``.

Everything a route needs beyond its request lives here, typed, made before the first request
(nothing is created lazily on ``app.state``): the settings, the owner's jobs as the hub lists them
(:class:`profilerhub_app.owned.OwnedJobs`, which also holds the owner's store), the readers of
Ready jobs (:class:`profilerhub_app.jobdata.JobData`) and the live view of running ones
(:class:`profilerhub_app.live.LiveView`), and the running jobs' tensor tables of the tensors API
and the Model page (:class:`profilerhub_analysis.tensors_api.JobTensors`). Routes reach it through
:func:`profilerhub_app.http.services`.
"""

from __future__ import annotations

from dataclasses import dataclass

from profilerhub_analysis.tensors_api import JobTensors
from profilerhub_app.hub import HttpHub, HubJobs
from profilerhub_app.jobdata import JobData
from profilerhub_app.live import LiveView
from profilerhub_app.owned import OwnedJobs
from profilerhub_app.settings import AppServiceSettings


@dataclass(frozen=True)
class AppServices:
    """The app's parts (see the module docstring)."""

    settings: AppServiceSettings
    jobs: OwnedJobs
    data: JobData
    live: LiveView
    tensor_tables: JobTensors

    @classmethod
    def build(cls, settings: AppServiceSettings, hub: HubJobs | None = None) -> AppServices:
        """The parts of the app ``settings`` describe; ``hub`` answers which jobs the owner has
        (default: the hub over HTTP at ``hub_api_url``)."""
        hub = hub or HttpHub(settings.hub_api_url or settings.hub_url, settings.id)
        return cls(
            settings=settings,
            jobs=OwnedJobs(settings, hub),
            data=JobData(settings.cache_dir, settings.open_timelines),
            live=LiveView(),
            tensor_tables=JobTensors(),
        )


__all__ = ["AppServices"]
