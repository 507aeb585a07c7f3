"""Deploy environments: container images (``omnienv build``) and Hugging Face Spaces (``omnienv push``).

Running an image is the client's side (:mod:`omnienv.client.container`, ``from_docker_image``).
Needs the ``deploy`` extra (``pip install 'omnienv[deploy]'``) to build and upload.
"""

from omnienv.deploy.context import DEFAULT_BASE, DeployError, ImagePlan, plan_image, write_context
from omnienv.deploy.image import ImageBuildError, build_image, default_tag
from omnienv.deploy.spaces import push_space, space_host, write_space_bundle

__all__ = [
    "DEFAULT_BASE",
    "DeployError",
    "ImageBuildError",
    "ImagePlan",
    "build_image",
    "default_tag",
    "plan_image",
    "push_space",
    "space_host",
    "write_context",
    "write_space_bundle",
]
