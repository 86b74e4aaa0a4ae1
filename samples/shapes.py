"""Shapes: a small Python module for the code worker's sample run."""

import math


class Circle:
    """A circle of a given radius."""

    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return math.pi * square(self.radius)

    def describe(self) -> str:
        return f"circle of area {self.area():.2f}"


def square(x: float) -> float:
    return x * x


def largest(circles: list[Circle]) -> Circle:
    return max(circles, key=lambda c: c.area())
