"""The adapter stage's one-line refusal of a Hugging Face model (`HFModelError`), below every module that raises it."""


class HFModelError(ValueError):
    """A Hugging Face model that cannot or must not be loaded; the message is one line for the user."""
