"""The library's tests, in folders by stage (model -> data -> adapters -> decode -> analysis -> store -> train ->
charts)."""
