import unittest

from calc import evaluate, tokenize


class TokenizeTest(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(tokenize("1 + .5*2."), [1.0, "+", 0.5, "*", 2.0])


class EvaluateTest(unittest.TestCase):
    def test_precedence(self):
        self.assertEqual(evaluate("1 + 2 * 3"), 7.0)

    def test_left_assoc(self):
        self.assertEqual(evaluate("10 - 4 - 3"), 3.0)

    def test_power_right_assoc(self):
        self.assertEqual(evaluate("2 ^ 3 ^ 2"), 512.0)

    def test_unary(self):
        self.assertEqual(evaluate("-(2 + 3)"), -5.0)
        self.assertEqual(evaluate("-2 ^ 2"), -4.0)

    def test_errors(self):
        with self.assertRaises(ValueError):
            evaluate("2 3")
        with self.assertRaises(ZeroDivisionError):
            evaluate("1 / 0")


if __name__ == "__main__":
    unittest.main()
