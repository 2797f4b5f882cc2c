from __future__ import annotations

import socket


class Gateway:
    """Talks to a payment service over TCP."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def charge(self, amount: float) -> str:
        with socket.create_connection((self.host, self.port), timeout=2) as conn:
            conn.sendall(f"{amount:.2f}\n".encode())
            return conn.recv(64).decode().strip()


def checkout(cart, gateway: Gateway) -> str:
    amount = cart.total()
    if amount <= 0:
        return "nothing-to-pay"
    return gateway.charge(amount)
