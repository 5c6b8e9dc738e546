"""A small client for the hub's job API (the "Hub upload protocol" in ``docs/sdk.md``).

Used by the SDK's hub sink and by ``profilerhub upload``; it speaks through the one client of the
hub's API (``hubhttp.HubHTTP``: its user agent, error parser and retry policy).  ``httpx`` is
imported when a client is made, not when this module is.

    HubError(status, code, message)
    ├── retryable=True    no answer, timeout, 5xx, 408, 429: try again later
    ├── fatal=True        401/403 (bad token, not allowed), 404 on /me or the jobs collection
    └── neither           this request was refused (other 4xx): do not repeat it
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .hubhttp import API, RETRY, HubHTTP, HubUnreachable, error_of

STOP_HEADER = "X-ProfilerHub-Stop"
CAPTURE_HEADER = "X-ProfilerHub-Capture"


def _capture(header: str | None) -> dict[str, Any] | None:
    """A capture request the hub sent, checked; None when absent or not one."""
    if not header:
        return None
    try:
        wanted = json.loads(header)
    except ValueError:
        return None
    if not isinstance(wanted, dict) or not isinstance(wanted.get("id"), str):
        return None
    steps, start = wanted.get("steps"), wanted.get("start_step")
    if not isinstance(steps, int) or steps < 1 or not (start is None or isinstance(start, int)):
        return None
    return {
        "id": wanted["id"],
        "steps": steps,
        "start_step": start,
        "record_shapes": bool(wanted.get("record_shapes")),
    }


class HubError(Exception):
    """A hub request failed; see the module docstring for ``retryable`` and ``fatal``."""

    def __init__(
        self, message: str, *, status: int = 0, code: str = "", retryable: bool = False, fatal: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.retryable = retryable
        self.fatal = fatal


@dataclass(frozen=True)
class HubJob:
    """A job registered on the hub, and how its files are to be uploaded."""

    domain: str
    user: str
    job_id: str
    name: str
    upload_mode: str  # "hub": PUT to the hub; "s3": PUT to presigned URLs the hub hands out
    #: hub mode: where ``PUT {files_url}{path}`` goes ("" = ``{job path}/files/``, the default)
    files_url: str = ""

    @property
    def path(self) -> str:
        return f"{API}/domains/{quote(self.domain)}/users/{quote(self.user)}/jobs/{quote(self.job_id)}"


class HubClient:
    """Speaks the hub's job protocol with a bearer token.

    ``transport`` is an ``httpx`` transport seam for tests; ``timeout`` bounds every request.
    """

    def __init__(self, url: str, token: str | None, *, timeout: float = 30.0, transport: Any = None) -> None:
        self._http = HubHTTP(url, token, component="sdk", timeout=timeout, transport=transport)
        self.url = self._http.url

    def close(self) -> None:
        self._http.close()

    def me(self) -> dict[str, Any]:
        """``GET /api/v1/me`` -> ``{"user", "domain", "role"}``."""
        return self._json("GET", f"{API}/me", missing_is_fatal=True)

    def create_job(
        self,
        domain: str,
        user: str,
        name: str,
        metric_definitions: list[dict[str, str]] | None = None,
        rules: list[dict[str, Any]] | None = None,
        *,
        stop_on: list[str] | None = None,
    ) -> HubJob:
        """``POST …/jobs`` -> the new job (201), with where its files go."""
        body: dict[str, Any] = {"name": name}
        if metric_definitions:
            body["metric_definitions"] = metric_definitions
        if rules:
            body["rules"] = rules
        if stop_on:
            body["stop_on"] = stop_on
        path = f"{API}/domains/{quote(domain)}/users/{quote(user)}/jobs"
        data = self._json("POST", path, json_body=body, missing_is_fatal=True)
        try:
            upload = data.get("upload") or {"mode": "hub"}
            mode = str(upload["mode"])
            files_url = str(upload.get("files_url") or upload.get("base_url") or "") if mode == "hub" else ""
            if files_url.startswith(self.url + "/"):
                files_url = files_url[len(self.url) :]
            if "://" in files_url:
                files_url = ""  # never send the token to another origin: use the documented path
            if files_url and not files_url.endswith("/"):
                files_url += "/"
            if mode not in ("hub", "s3"):
                raise HubError(
                    f"the hub asked for upload mode {mode!r}; this SDK knows 'hub' and 's3'", fatal=True
                )
            return HubJob(domain, user, str(data["job_id"]), str(data.get("name", name)), mode, files_url)
        except (KeyError, TypeError, AttributeError) as exc:
            raise HubError(
                f"the hub's answer to {path} lacks job_id/upload: {data!r}"[:300], fatal=True
            ) from exc

    def job_url(self, job: HubJob) -> str:
        return self.url + job.path

    def app_job_url(self, job: HubJob) -> str | None:
        """Where the job opens in its owner's running profiler app (None: no app InService)."""
        path = f"{API}/domains/{quote(job.domain)}/users/{quote(job.user)}/apps"
        resp = self._send("GET", f"{path}?status=InService&limit=50", what="the app list")
        for app in (resp.json() or {}).get("items") or []:
            if app.get("app_type") == "DetailedProfiler" and str(app.get("url", "")).startswith("/"):
                return f"{self.url}{app['url']}jobs/{quote(job.job_id)}"
        return None

    def get_job(self, job: HubJob) -> dict[str, Any]:
        """``GET …/jobs/{job_id}``."""
        return self._json("GET", job.path)

    def put_file(
        self, job: HubJob, path: str, data: bytes, content_type: str
    ) -> tuple[str | None, dict[str, Any] | None]:
        """Upload one raw file: through the hub (``PUT …/files/{path}``) or to a presigned URL.

        Returns what the hub's answer asks of the run: ``X-ProfilerHub-Stop`` (the rule it asks the
        run to stop for, or ``StopTrainingJob``) and ``X-ProfilerHub-Capture`` (a profiler capture:
        ``{"id", "steps", "start_step", "record_shapes"}``), each None when absent."""
        if job.upload_mode == "s3":
            answer = self._send("POST", f"{job.path}/uploads", json_body={"path": path, "size": len(data)})
            try:
                grant = answer.json()
            except ValueError as exc:
                raise HubError(f"the hub's upload grant for {path} is not JSON", retryable=True) from exc
            try:
                method, url = str(grant.get("method", "PUT")).upper(), str(grant["url"])
                headers = {str(k): str(v) for k, v in (grant.get("headers") or {}).items()}
            except (KeyError, TypeError, AttributeError) as exc:
                raise HubError(f"the hub's upload grant for {path} lacks a url", retryable=True) from exc
            headers.setdefault("Content-Type", content_type)
            # A presigned URL carries its own signature: never send it our token.
            self._send(
                method, url, content=data, headers=headers, what=f"upload of {path} to storage", bare=True
            )
        else:
            answer = self._send(
                "PUT",
                f"{job.files_url or job.path + '/files/'}{quote(path, safe='/')}",
                content=data,
                headers={"Content-Type": content_type},
                what=f"upload of {path}",
            )
        return answer.headers.get(STOP_HEADER) or None, _capture(answer.headers.get(CAPTURE_HEADER))

    def complete(self, job: HubJob, report: dict[str, Any] | None = None) -> None:
        """``POST …/jobs/{job_id}/complete`` -> 202: the hub starts ingesting the job.

        ``report`` (``{"missing_files", ...}``) tells it which files the run could not deliver."""
        self._send("POST", f"{job.path}/complete", json_body=report, what="job completion")

    def _json(
        self, method: str, path: str, *, json_body: Any = None, missing_is_fatal: bool = False
    ) -> dict[str, Any]:
        resp = self._send(method, path, json_body=json_body, missing_is_fatal=missing_is_fatal)
        try:
            data = resp.json()
        except ValueError as exc:
            raise HubError(
                f"{method} {path}: the hub answered {resp.status_code} with no JSON", retryable=True
            ) from exc
        if not isinstance(data, dict):
            raise HubError(f"{method} {path}: the hub answered with {type(data).__name__}, not an object")
        return data

    def _send(
        self,
        method: str,
        url: str,
        *,
        what: str = "",
        json_body: Any = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        missing_is_fatal: bool = False,
        bare: bool = False,
    ) -> Any:
        what = what or f"{method} {url}"
        try:
            resp = self._http.send(method, url, json=json_body, content=content, headers=headers, bare=bare)
        except HubUnreachable as exc:
            raise HubError(f"{what}: {exc.message}", retryable=True) from exc
        if resp.status_code < 300:
            return resp
        code, message = error_of(resp)
        status = resp.status_code
        text = f"{what}: HTTP {status} {code}: {message}".rstrip(": ")
        if status == 401:
            text = f"{what}: the hub rejected the token (HTTP 401 {code}: {message}); check PROFILERHUB_TOKEN"
        raise HubError(
            text,
            status=status,
            code=code,
            retryable=RETRY.retryable(status),
            fatal=status in (401, 403) or (missing_is_fatal and status == 404),
        )
