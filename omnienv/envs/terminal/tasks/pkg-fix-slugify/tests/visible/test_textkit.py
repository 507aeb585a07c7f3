import unittest

from textkit import slugify, truncate_words


class SlugifyTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(slugify("hello world"), "hello-world")

    def test_lowercase(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_accents(self):
        self.assertEqual(slugify("Café au lait"), "cafe-au-lait")

    def test_separator(self):
        self.assertEqual(slugify("a  b", sep="_"), "a_b")

    def test_max_length(self):
        self.assertEqual(slugify("hello big world", max_length=6), "hello")


class TruncateTest(unittest.TestCase):
    def test_longer(self):
        self.assertEqual(truncate_words("one two three", 2), "one two...")

    def test_exact(self):
        self.assertEqual(truncate_words("one two", 2), "one two")


if __name__ == "__main__":
    unittest.main()
