"""The store tier's bytes side: a shared key-value store below host DRAM.

Nothing here knows trees or pools (`kvledger.cache.l3_tier` joins them):

    keys.py          salted hash chain over page token ids; namespaces; object keys
    backend.py       the batch interface (exists / get / put / delete), StoreUnavailable
    local_dir.py     one file per object, no server
    redis_store.py   Redis / Valkey
    mooncake_store.py  Mooncake Store (TCP transport)
    group.py         a node's pages + state as one group, committed by a manifest
    transfer.py      whole-group writes, longest intact prefix reads
    group_store.py   the interface of a tier's groups in either mode, and its answers
    accounting.py    the groups in accounting mode: sizes, LRU, transfer time (no bytes)
    link.py          what a transfer costs (accounting mode), the simulator's store settings
    queue.py         the worker thread and its acknowledgements
    servers.py       start Redis / a Mooncake master on free loopback ports
"""
