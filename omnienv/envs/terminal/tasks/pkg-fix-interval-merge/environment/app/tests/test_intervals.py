import unittest

from intervals import gaps, merge, total_length


class MergeTest(unittest.TestCase):
    def test_overlap(self):
        self.assertEqual(merge([(1, 4), (2, 6)]), [(1, 6)])

    def test_touching(self):
        self.assertEqual(merge([(1, 3), (3, 5)]), [(1, 5)])

    def test_unsorted(self):
        self.assertEqual(merge([(7, 8), (1, 2)]), [(1, 2), (7, 8)])

    def test_contained(self):
        self.assertEqual(merge([(1, 10), (2, 3)]), [(1, 10)])


class LengthTest(unittest.TestCase):
    def test_union(self):
        self.assertEqual(total_length([(0, 5), (3, 8)]), 8)

    def test_gaps(self):
        self.assertEqual(gaps([(2, 4)], 0, 10), [(0, 2), (4, 10)])


if __name__ == "__main__":
    unittest.main()
