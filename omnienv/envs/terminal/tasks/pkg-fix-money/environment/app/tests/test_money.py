import unittest
from decimal import Decimal

from ledger import format_amount, parse_amount, split, to_cents


class MoneyTest(unittest.TestCase):
    def test_round_half_up(self):
        self.assertEqual(to_cents("0.125"), Decimal("0.13"))

    def test_float(self):
        self.assertEqual(to_cents(2.675), Decimal("2.68"))

    def test_parse(self):
        self.assertEqual(parse_amount("$1,234.50"), Decimal("1234.50"))
        self.assertEqual(parse_amount("($12.00)"), Decimal("-12.00"))

    def test_format(self):
        self.assertEqual(format_amount(Decimal("-1234.5")), "-$1,234.50")

    def test_split(self):
        self.assertEqual(split(Decimal("10.00"), 3), [Decimal("3.34"), Decimal("3.33"), Decimal("3.33")])


if __name__ == "__main__":
    unittest.main()
