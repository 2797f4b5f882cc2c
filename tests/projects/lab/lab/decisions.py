def classify(n):
    if n < 0:
        return "neg"
    elif n == 0:
        return "zero"
    return "pos"


def countdown(n):
    while n > 0:
        n -= 1
    return n


def parity(n):
    return "even" if n % 2 == 0 else "odd"


def evens(items):
    return [i for i in items if i % 2 == 0]


def command(cmd):
    match cmd:
        case "go":
            return 1
        case "stop":
            return 2
        case _:
            return 0


def checked(n):
    assert n >= 0
    return n
