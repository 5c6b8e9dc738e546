"""Webhooks: where they may point (``addresses``), how their bodies are signed (``signing``) and
which events they are told about (``events``). The rows are ``records.webhooks``; the worker
delivers (``profilerhub_worker.webhooks``). Described for users in docs/webhooks.md."""

from profilerhub_core.webhooks.addresses import AddressRefused, Destination, check_destination
from profilerhub_core.webhooks.signing import SIGNATURE_HEADER, sign, verify

__all__ = ["SIGNATURE_HEADER", "AddressRefused", "Destination", "check_destination", "sign", "verify"]
