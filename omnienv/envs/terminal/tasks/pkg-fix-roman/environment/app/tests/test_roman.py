import unittest

from roman import from_roman, to_roman


class ToRomanTest(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(14), "XIV")

    def test_subtractive(self):
        self.assertEqual(to_roman(1990), "MCMXC")

    def test_zero(self):
        with self.assertRaises(ValueError):
            to_roman(0)


class FromRomanTest(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(from_roman("VIII"), 8)

    def test_subtractive(self):
        self.assertEqual(from_roman("XIV"), 14)

    def test_invalid(self):
        with self.assertRaises(ValueError):
            from_roman("IIII")


if __name__ == "__main__":
    unittest.main()
