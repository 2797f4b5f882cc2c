import asyncio

async def leaf(x):
    await asyncio.sleep(0)
    return x * 2

async def worker(n):
    return await leaf(n)

async def spawn():
    tasks = [asyncio.create_task(worker(i)) for i in range(3)]
    return sum(await asyncio.gather(*tasks))

def run():
    return asyncio.run(spawn())
