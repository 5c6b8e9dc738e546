"""SageMaker's own service model (botocore's ``sagemaker`` ``service-2.json``; CloudWatch's and
CloudWatch Logs' for their doors) and the mapping between SageMaker's identifiers and ProfilerHub's.

    operation(name, service) the botocore ``OperationModel`` (UnknownOperationException if none)
    validate_input(op, body) botocore's ``ParamValidator`` over the request (required members,
                             types, minima, unknown members), then what it leaves to the
                             service: enums, maxima, patterns (ValidationException)
    domain_id(domain)        ``d-`` + the domain's uuid in hex: ``d-3f2a…`` (SageMaker's format)
    domain_uuid(domain_id)   back again (None when it is not one of ours)
    Arns(settings)           ``arn:aws:sagemaker:{region}:{account}:domain/{id}`` and friends
    epoch(datetime)          the JSON 1.1 protocol's timestamps: seconds since the epoch

The model is loaded once per process (a few hundred ms: it is SageMaker's whole API).
"""

from __future__ import annotations

import functools
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from profilerhub_core.db.models import App, Domain
from profilerhub_core.records.apps import AppValues
from profilerhub_core.settings import Settings
from profilerhub_hub.sagemaker.errors import AwsError, validation

if TYPE_CHECKING:
    from botocore.model import OperationModel, ServiceModel, Shape
    from botocore.validate import ParamValidator

_DOMAIN_ID = re.compile(r"d-([0-9a-f]{32})")


@functools.cache
def service_model(service: str = "sagemaker") -> ServiceModel:
    """botocore's model of ``service`` (``sagemaker``, ``cloudwatch``, ``logs``), once per process
    (botocore is imported here, on a door's first request, not at the hub's start)."""
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


@functools.cache
def _validator() -> ParamValidator:
    from botocore.validate import ParamValidator

    return ParamValidator()


@functools.cache
def _operation_names(service: str) -> frozenset[str]:
    return frozenset(service_model(service).operation_names)  # a list of ~400 in SageMaker's


def operation(name: str, service: str = "sagemaker") -> OperationModel:
    if name not in _operation_names(service):
        raise AwsError("UnknownOperationException", f"Unknown operation {name} of {service}")
    return service_model(service).operation_model(name)


def validate_input(op: OperationModel, body: Any) -> dict[str, Any]:
    """``body`` checked against ``op``'s input shape; ValidationException listing every problem."""
    if not isinstance(body, dict):
        raise AwsError("SerializationException", "The request body must be a JSON object")
    if op.input_shape is None:
        return body
    report = _validator().validate(body, op.input_shape)
    if report.has_errors():
        raise validation(report.generate_report().replace("\n", " "))
    problems: list[str] = []
    _constraints(op.input_shape, body, op.input_shape.name, problems)
    if problems:
        raise validation(f"{len(problems)} validation error(s) detected: " + "; ".join(problems[:10]))
    return body


def _constraints(shape: Shape, value: Any, path: str, problems: list[str]) -> None:
    """What botocore's ParamValidator leaves to the service: enums, maxima and patterns."""
    if shape.type_name == "structure":
        for name, member in shape.members.items():
            if name in value:
                _constraints(member, value[name], f"{path}.{name}", problems)
    elif shape.type_name == "list":
        for i, item in enumerate(value):
            _constraints(shape.member, item, f"{path}[{i}]", problems)
    elif shape.type_name == "map":
        for key, item in value.items():
            _constraints(shape.value, item, f"{path}.{key}", problems)
    metadata = shape.metadata
    if "max" in metadata:
        size = value if shape.type_name in ("integer", "long", "float", "double") else _length(value)
        if size is not None and size > metadata["max"]:
            what = "value" if shape.type_name in ("integer", "long", "float", "double") else "length"
            problems.append(f"Value at '{path}' failed to satisfy constraint: Member must have {what} "
                            f"less than or equal to {metadata['max']}")  # fmt: skip
    if shape.type_name == "string" and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            problems.append(f"Value '{value[:80]}' at '{path}' failed to satisfy constraint: Member must "
                            f"satisfy enum value set: [{', '.join(shape.enum)}]")  # fmt: skip
        pattern = _pattern(metadata.get("pattern"))
        if pattern is not None and not pattern.fullmatch(value):
            problems.append(f"Value '{value[:80]}' at '{path}' failed to satisfy constraint: Member must "
                            f"satisfy regular expression pattern: {metadata['pattern']}")  # fmt: skip


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, list, dict)) else None


# Java's Unicode classes the model's tag patterns use, as Python reads them: ``\w`` is exactly
# letters, numbers and ``_`` (str.isalnum() or "_"); then Unicode's space separators (Zs, Zl, Zp).
_JAVA_CLASSES = {
    r"\p{L}\p{Z}\p{N}_": r"\w \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000",
}


@functools.cache
def _pattern(text: str | None) -> re.Pattern[str] | None:
    """The model's (Java) pattern as a Python one; None where Python reads it differently."""
    if not text:
        return None
    for java, python in _JAVA_CLASSES.items():
        text = text.replace(java, python)
    try:
        return re.compile(text, re.DOTALL)
    except re.error:
        return None


def domain_id(domain: Domain | str) -> str:
    raw = domain if isinstance(domain, str) else domain.id
    return "d-" + uuid.UUID(raw).hex


def domain_uuid(sagemaker_id: str) -> str | None:
    match = _DOMAIN_ID.fullmatch(sagemaker_id)
    return str(uuid.UUID(match[1])) if match else None


def epoch(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None


@dataclass(frozen=True, slots=True)
class Arns:
    """The ARNs SageMaker would give these resources, in the configured region and account."""

    region: str
    account: str

    @classmethod
    def of(cls, settings: Settings) -> Arns:
        return cls(settings.sagemaker_region, settings.sagemaker_account_id)

    def _arn(self, resource: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:{resource}"

    def domain(self, domain: Domain | str) -> str:
        return self._arn(f"domain/{domain_id(domain)}")

    def user(self, domain: Domain | str, user_name: str) -> str:
        return self._arn(f"user-profile/{domain_id(domain)}/{user_name}")

    def app(self, app: App | AppValues, user_name: str) -> str:
        kind = app.app_type.value.lower()
        return self._arn(f"app/{domain_id(app.domain_id)}/{user_name}/{kind}/{app.app_name}")

    def training_job(self, job_id: str) -> str:
        """By the job's id (a name is shared by every run of it): ``…:training-job/{job_id}``."""
        return self._arn(f"training-job/{job_id}")

    def parse(self, arn: str) -> tuple[str, list[str]] | None:
        """``("domain", [DomainId])``, ``("user-profile", [DomainId, name])`` or ``("app",
        [DomainId, name, apptype in lower case, AppName])``; None for any other ARN."""
        prefix = self._arn("")
        if not arn.startswith(prefix):
            return None
        kind, _, rest = arn[len(prefix) :].partition("/")
        parts = rest.split("/")
        if _ARN_PARTS.get(kind) != len(parts) or not all(parts):
            return None
        return kind, parts


_ARN_PARTS = {"domain": 1, "user-profile": 2, "app": 4}


__all__ = ["Arns", "domain_id", "domain_uuid", "epoch", "operation", "service_model", "validate_input"]
