import socket
import subprocess
import sys


def try_ping(port):
    """Connect to a loopback port: "ok", or the name of the error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return "ok"
    except OSError as exc:
        return type(exc).__name__


def try_raw(port):
    """A plain connect, no resolver: "ok", or the name of the error."""
    sock = socket.socket()
    try:
        sock.connect(("127.0.0.1", port))
        return "ok"
    except OSError as exc:
        return type(exc).__name__
    finally:
        sock.close()


def resolve(host):
    return socket.getaddrinfo(host, 80)


def run_child():
    return subprocess.run([sys.executable, "-c", "pass"], check=False).returncode
