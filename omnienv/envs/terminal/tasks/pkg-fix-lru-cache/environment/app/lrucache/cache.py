"""A least-recently-used cache."""
from collections import OrderedDict


class LRUCache:
    """Holds at most `capacity` items (capacity >= 1, else ValueError).

    get() and put() make a key the most recently used one; when a put() would exceed the
    capacity, the least recently used key is evicted. `key in cache` does not count as a use.
    Any value may be stored, None included. stats() returns {"hits": h, "misses": m,
    "size": n}, counting get() calls that found / did not find their key.
    """

    def __init__(self, capacity):
        if capacity < 0:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._data = OrderedDict()
        self._hits = 0
        self._misses = 0

    def get(self, key, default=None):
        value = self._data.get(key)
        if value is not None:
            self._hits += 1
            return value
        self._misses += 1
        return default

    def put(self, key, value):
        self._data[key] = value
        if len(self._data) > self.capacity + 1:
            self._data.popitem(last=False)

    def __contains__(self, key):
        return key in self._data

    def __len__(self):
        return len(self._data)

    def keys(self):
        """Keys from least to most recently used."""
        return list(self._data)

    def stats(self):
        return {"hits": self._hits, "misses": self._misses, "size": len(self._data)}
