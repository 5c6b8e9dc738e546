"""The hub sink: registers the job on the hub, then uploads through it (or to presigned URLs)."""

from __future__ import annotations

from typing import Any

from ..hubclient import HubClient, HubError, HubJob
from .base import USER_STOP, Sink, SinkError, check_relative_path, content_type


class HubSink(Sink):
    """``open`` asks ``GET /me`` who we are and creates the job; ``put`` uploads one file.

    ``metric_definitions`` are sent with the job so the hub knows the metric names up front;
    ``stop_on`` too. Each upload's answer may say that the hub asks the run to stop
    (``X-ProfilerHub-Stop``): ``stop_request`` keeps it, and the run raises at its next step.  Set
    ``job`` before ``open`` to resume uploading to that job (used if it is still ``InProgress``).
    """

    kind = "hub"

    def __init__(
        self,
        url: str,
        token: str | None,
        job: str,
        metric_definitions: list[dict[str, str]] | None = None,
        transport: Any = None,
        rules: list[dict[str, Any]] | None = None,
        stop_on: list[str] | None = None,
    ) -> None:
        self.url = url
        self.token = token
        self.job_name = job
        self.metric_definitions = metric_definitions
        self.rules = rules
        self.stop_on = stop_on
        self._transport = transport
        self._client: HubClient | None = None
        self.job: HubJob | None = None

    @property
    def location(self) -> str:
        if self._client is not None and self.job is not None:
            return self._client.job_url(self.job)
        return f"{self.url} (job {self.job_name!r} not registered yet)"

    def where_to_look(self) -> str:
        """Where a person sees the job: its page in the owner's running profiler app, or how to get one.

        Asked once the run is over, on a client of its own with a short timeout (the run's client
        may be closed, and a hub that is down must not hold up the end of training)."""
        if self.job is None:
            return ""
        client = HubClient(self.url, self.token, timeout=3.0, transport=self._transport)
        try:
            url = client.app_job_url(self.job)
        except (HubError, ValueError, AttributeError):
            url = None
        finally:
            client.close()
        if url:
            return f"open it in your profiler app: {url}"
        return (
            "see it in your profiler app once it runs: `profilerhub apps start`, or Start in the console "
            f"at {self.url.rstrip('/')}/console/"
        )

    def info(self) -> dict[str, Any]:
        out = super().info()
        if self.job is not None:
            out.update(job_id=self.job.job_id, domain=self.job.domain, user=self.job.user)
        return out

    def open(self) -> None:
        if not self.token:
            raise SinkError("no hub token: set PROFILERHUB_TOKEN (or pass token= to ph.init)", fatal=True)
        try:
            if self._client is None:
                self._client = HubClient(self.url, self.token, transport=self._transport)
            wanted = self.job
            if wanted is not None and self._still_open(wanted):
                return
            me = self._client.me()
            if wanted is not None and (str(me["domain"]), str(me["user"])) != (wanted.domain, wanted.user):
                raise SinkError(
                    f"job {wanted.job_id} was registered by {wanted.domain}/{wanted.user}, not by this "
                    "token's user; deliver it with their token",
                    fatal=True,
                )
            self.job = self._client.create_job(
                str(me["domain"]),
                str(me["user"]),
                self.job_name,
                self.metric_definitions,
                self.rules,
                stop_on=self.stop_on,
            )
        except HubError as exc:
            raise _sink_error(exc) from exc
        except KeyError as exc:
            raise SinkError(f"the hub's /api/v1/me answer lacks {exc}", fatal=True) from exc

    def _still_open(self, job: HubJob) -> bool:
        """Whether a job given to resume (``self.job`` set before ``open``) still takes files.

        A Ready or Failed job the run completed with files missing takes them again (``upload``
        is given); one being ingested answers a retryable error, so its files are not sent to a
        new job meanwhile.
        """
        assert self._client is not None
        try:
            found = self._client.get_job(job)
        except HubError as exc:
            if exc.status == 404:
                return False
            raise
        status, upload = found.get("status"), found.get("upload", {})
        if upload is not None and status in ("InProgress", "Ready", "Failed"):
            return True
        if status in ("InProgress", "Processing"):  # completed, being ingested: ask again later
            raise SinkError(
                f"job {job.job_id} is being ingested; its files go up once it is done", retryable=True
            )
        return False

    def put(self, path: str, data: bytes) -> None:
        assert self._client is not None and self.job is not None, "open() first"
        try:
            stop, capture = self._client.put_file(
                self.job, check_relative_path(path), data, content_type(path)
            )
        except HubError as exc:
            raise _sink_error(exc) from exc
        if stop and (self.stop_request is None or stop == USER_STOP):  # a person's stop wins
            self.stop_request = stop
        if capture is not None:
            self.capture_request = capture

    def complete(self, report: dict[str, Any] | None = None) -> None:
        assert self._client is not None and self.job is not None, "open() first"
        try:
            self._client.complete(self.job, report)
        except HubError as exc:
            raise _sink_error(exc) from exc

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _sink_error(exc: HubError) -> SinkError:
    return SinkError(exc.message, retryable=exc.retryable, fatal=exc.fatal)
