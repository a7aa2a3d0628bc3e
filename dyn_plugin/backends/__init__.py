"""Dynamics backends behind one interface (:class:`~.base.Backend`), and their registry."""

from .base import Backend
from .registry import get_backend, list_backends, register_backend, unregister_backend

__all__ = ["Backend", "get_backend", "list_backends", "register_backend", "unregister_backend"]
