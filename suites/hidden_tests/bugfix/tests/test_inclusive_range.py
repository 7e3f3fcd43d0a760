# Hidden from the agent: evalua copies it in only when grading.
import unittest

from calc import inclusive_range


class InclusiveRangeTest(unittest.TestCase):
    def test_includes_stop(self):
        self.assertEqual(inclusive_range(1, 4), [1, 2, 3, 4])

    def test_empty_when_reversed(self):
        self.assertEqual(inclusive_range(4, 1), [])
