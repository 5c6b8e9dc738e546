"""SageMaker's control-plane API for domains, user profiles and apps, at ``{hub}/sagemaker``.

A second door onto the hub's service functions, for boto3 and the AWS CLI
(``boto3.client("sagemaker", endpoint_url=f"{hub}/sagemaker")``): the same records, the same
permission function, the same audit log as the REST API; SageMaker's protocol, names and errors.

    endpoint     the door (ASGI, before FastAPI's router): JSON 1.1 protocol, dispatch, errors
    sigv4        checking a request's SigV4 signature with botocore's signer
    operations   the operations, over ``profilerhub_core.records``
    tagging      AddTags, ListTags, DeleteTags and the Tags of the Create operations
    model        botocore's SageMaker service model; SageMaker ids and ARNs
    errors       SageMaker's error shape and the mapping of the hub's domain errors

Access keys are issued by ``POST /api/v1/domains/{domain}/users/{user}/access-keys``
(``profilerhub_core.records.access_keys``). User docs: ``docs/sagemaker-api.md``.
"""

from profilerhub_hub.sagemaker.endpoint import PREFIX, SageMakerDoor

__all__ = ["PREFIX", "SageMakerDoor"]
