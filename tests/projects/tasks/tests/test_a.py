import pytest
from app import run, spawn

def test_sync():
    assert run() == 6

@pytest.mark.asyncio
async def test_async():
    assert await spawn() == 6
