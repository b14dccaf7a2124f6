"""The decode stage's one error a user can cause."""


class InputError(ValueError):
    """Text a user typed cannot be decoded (empty, too long for the model), or a decode asked for what it cannot
    keep (the store of an encoder-decoder, a head mask with the store)."""
