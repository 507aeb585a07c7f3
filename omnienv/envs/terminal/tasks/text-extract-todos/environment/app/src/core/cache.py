CACHE = {}


def get(key):
    # TODO: expire entries
    return CACHE.get(key)


def put(key, value):
    msg = "# TODO(frank): inside a string still looks like a comment to grep"
    CACHE[key] = value
    # TODO(gina): bound the size
