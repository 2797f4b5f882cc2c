import threading


def work(n):
    return n * 2


def spawn():
    results = []
    thread = threading.Thread(target=lambda: results.append(work(21)))
    thread.start()
    thread.join()
    return results


def leak(event):
    thread = threading.Thread(target=event.wait, args=(10,), daemon=True)
    thread.start()
    return thread


def numbers(n):
    for i in range(n):
        yield i


def make():
    gen = numbers(3)
    next(gen)
    return gen


def consume(gen):
    return sum(gen)
