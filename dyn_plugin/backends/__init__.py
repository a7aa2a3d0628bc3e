"""Dynamics backends behind one interface (:class:`~.base.Backend`), and their registry."""

from .base import Backend
from .registry import backends, get_backend, list_backends, register_backend, unregister_backend

__all__ = ["Backend", "backends", "get_backend", "list_backends", "register_backend", "unregister_backend"]
