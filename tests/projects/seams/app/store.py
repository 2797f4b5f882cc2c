class Store:
    def put(self, key, value):
        return f"real:{key}={value}"

    def merge(self, other):
        return "merged"

    @staticmethod
    def norm(key):
        return key.lower()

    @classmethod
    def build(cls, name):
        return cls()

    def save(self, key, value, *, retries=3):
        return self.put(key, value)


class Cache(Store):
    pass


def put_via_instance(store, key, value):
    return store.put(key, value)


def put_via_class(store, key, value):
    return Store.put(store, key, value)


def put_one(store):
    return store.put("k")


def put_three(store):
    return store.put("a", "b", "c")


def merge_two(a, b):
    return a.merge(b)


def norm_via_instance(store, key):
    return store.norm(key)


def norm_via_class(key):
    return Store.norm(key)


def build_via_class(name):
    return Store.build(name)


def build_via_instance(store, name):
    return store.build(name)


def save(store):
    return store.save("k", "v", retries=1)


def fetch(url, timeout=5):
    return "real:" + url


def use_fetch(url):
    return fetch(url)


def use_fetch_extra(url):
    return fetch(url, 1, 2)
