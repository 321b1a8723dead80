"""Reading a whole API list the way a client does: page after page by the ``next`` links."""


def every(client, url: str, *, limit: int = 1000) -> list:
    """Every row of the list at ``url``, following ``next`` until it is null."""
    rows = []
    for _ in range(limit):
        answer = client.get(url)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert set(body) == {"next", "previous", "results"}, body
        rows += body["results"]
        url = body["next"]
        if url is None:
            return rows
    raise AssertionError(f"more than {limit} pages")
