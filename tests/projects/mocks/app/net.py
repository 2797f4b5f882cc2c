def fetch(url, timeout=5):
    if not url:
        raise ValueError("no url")
    return "real:" + url

class Client:
    def get(self, path):
        return fetch("http://x/" + path)
    def post(self, path, body):
        return "posted"

def use_client(client):
    return client.get("a") + "|" + client.get("b")

def use_fetch(u):
    return fetch(u)

class Service:
    def __init__(self):
        self.client = Client()
    def run(self):
        return self.client.get("s")
    def ping(self):
        return "pong"
    def both(self):
        return self.ping() + self.run()

CONFIG = {"mode": "prod"}
def mode():
    return CONFIG["mode"]


class AsyncClient:
    async def get(self, path):
        return "async:" + path
