"""Container images, for authors of environments that ship their own image.

An image is built from a folder holding a Dockerfile (``images/<name>/`` in this
repository, or one a plugin registers with `register_image`) and tagged by a hash of
its content, so a changed context means a new image and an unchanged one is reused::

    >>> import gym.images
    >>> gym.images.register_image("my-image", Path(__file__).parent / "image")  # doctest: +SKIP
    >>> tag = gym.images.ensure_image("my-image")                                 # doctest: +SKIP

The command line does the same: ``gym images build``; ``gym images prune --budget``
removes the least recently used images over a disk budget (`prune_images`).
"""

from gym._sandbox._image_disk import DiskUse, PruneResult
from gym._sandbox._image_disk import disk_use as image_disk_use
from gym._sandbox._image_disk import prune as prune_images
from gym._sandbox._images import (
    ImageRecord,
    build_image,
    context_hash,
    ensure_image,
    image_dir,
    image_names,
    list_images,
    register_image,
)

__all__ = [
    "DiskUse",
    "ImageRecord",
    "PruneResult",
    "build_image",
    "context_hash",
    "ensure_image",
    "image_dir",
    "image_disk_use",
    "image_names",
    "list_images",
    "prune_images",
    "register_image",
]
