"""The one error type of model provisioning: its message names the file and the fix."""


class ModelError(RuntimeError):
    pass
