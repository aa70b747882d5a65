"""Small helpers shared by test modules."""

from remote_api.processes import free_port

__all__ = ["free_port"]
