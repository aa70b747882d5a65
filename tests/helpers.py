"""Small helpers shared by test modules."""

from remote_api.llama_server import free_port

__all__ = ["free_port"]
