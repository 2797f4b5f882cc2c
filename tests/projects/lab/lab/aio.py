import asyncio


async def fetch(n):
    await asyncio.sleep(0)
    return n * 2
