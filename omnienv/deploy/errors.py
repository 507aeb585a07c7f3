"""The error every deploy step raises for what the caller can change."""

from __future__ import annotations

from omnienv.core import OmniEnvError

__all__ = ["DeployError"]


class DeployError(OmniEnvError):
    """The environment cannot be deployed as asked (image, bundle, upload); the message says what to change."""

    code = "DEPLOY_ERROR"
