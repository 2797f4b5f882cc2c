from unittest import mock
import app.net as net
from app.net import Client, Service, use_client, use_fetch, mode

def test_patch_decorator_function():
    with mock.patch("app.net.fetch", return_value="fake") as m:
        assert use_fetch("u") == "fake"

@mock.patch.object(net, "fetch")
def test_patch_object_decorator(m):
    m.return_value = "x"
    use_fetch("u", )

def test_patch_start_stop_spec_less_mismatch():
    p = mock.patch("app.net.fetch")
    m = p.start()
    try:
        use_fetch("u")
        net.fetch("a", "b", "c", "d")  # real fetch would reject 4 args
    finally:
        p.stop()

def test_autospec_instance():
    c = mock.create_autospec(Client, instance=True)
    c.get.return_value = "m"
    assert use_client(c) == "m|m"

def test_autospec_function():
    f = mock.create_autospec(net.fetch)
    f.return_value = "q"
    with mock.patch.object(net, "fetch", f):
        use_fetch("z")

def test_spec_mock():
    c = mock.Mock(spec=Client)
    c.get.return_value = "s"
    use_client(c)

def test_magicmock_no_spec():
    c = mock.MagicMock()
    use_client(c)

def test_side_effect_runs_under_stand_in():
    def fake_get(path):
        return net.fetch("side:" + path)
    c = mock.Mock(spec=Client, **{"get.side_effect": fake_get})
    use_client(c)

def test_instance_attribute():
    s = Service()
    s.client = mock.Mock()
    s.client.get.return_value = "i"
    s.run()

def test_instance_attribute_method():
    s = Service()
    s.ping = mock.Mock(return_value="P")
    s.both()

def test_patch_dict():
    with mock.patch.dict("app.net.CONFIG", {"mode": "test"}):
        assert mode() == "test"

def test_monkeypatch(monkeypatch):
    monkeypatch.setattr(net, "fetch", lambda url, timeout=5: "mp")
    assert use_fetch("q") == "mp"

def test_mocker(mocker):
    m = mocker.patch("app.net.fetch", return_value="mk")
    assert use_fetch("q") == "mk"

class FakeClient(Client):
    def get(self, path):
        return "fake-" + path

class DuckClient:
    def get(self, path):
        return "duck"

def test_fake_subclass():
    assert use_client(FakeClient()) == "fake-a|fake-b"

def test_duck_fake():
    use_client(DuckClient())

def test_noncallable_mock_attribute():
    c = mock.NonCallableMock(spec=Client)
    c.get = mock.Mock(return_value="nc")
    use_client(c)


def test_patch_multiple():
    with mock.patch.multiple("app.net", fetch=mock.DEFAULT) as patched:
        patched["fetch"].return_value = "multi"
        assert use_fetch("x") == "multi"


def test_autospec_class():
    with mock.patch("app.net.Client", autospec=True) as klass:
        client = klass()
        client.get.return_value = "k"
        use_client(client)


def test_async_mock():
    import asyncio

    async def go(c):
        return await c.get("a")

    c = mock.AsyncMock(spec=net.AsyncClient)
    assert asyncio.run(go(c)) is not None


@mock.patch("app.net.fetch", return_value="cls")
class TestClassDecorator:
    def test_method(self, m):
        assert use_fetch("x") == "cls"
