import unittest

from lrucache import LRUCache


class CacheTest(unittest.TestCase):
    def test_get_put(self):
        c = LRUCache(2)
        c.put("a", 1)
        self.assertEqual(c.get("a"), 1)
        self.assertEqual(c.get("zz", "none"), "none")

    def test_eviction(self):
        c = LRUCache(2)
        for k in "abc":
            c.put(k, k.upper())
        self.assertEqual(c.keys(), ["b", "c"])

    def test_get_refreshes(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        c.get("a")
        c.put("c", 3)
        self.assertIn("a", c)
        self.assertNotIn("b", c)

    def test_stats(self):
        c = LRUCache(3)
        c.put("a", 1)
        c.get("a")
        c.get("b")
        self.assertEqual(c.stats(), {"hits": 1, "misses": 1, "size": 1})


if __name__ == "__main__":
    unittest.main()
