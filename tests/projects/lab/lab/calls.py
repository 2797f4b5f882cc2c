import json


def leaf(x):
    return x + 1


def loop(n):
    total = 0
    for _ in range(n):
        total = leaf(total)
    return total


def via_a():
    return leaf(1)


def via_b():
    return leaf(2)


def fail(x):
    if x < 0:
        raise ValueError("negative")
    return x


def secret(password, number):
    return len(password) + number % 7


def encode(value):
    return json.dumps({"value": value})
