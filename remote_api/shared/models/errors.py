"""The error types of model provisioning: each message names the file and the fix."""


class ModelError(RuntimeError):
    pass


class ConversionError(ModelError, ValueError):
    """A model file cannot be read or converted; the message names the file.

    A ModelError so ``stella models`` reports it like any other provisioning failure.
    """
