"""The Channels layer over Redis (settings.CHANNEL_LAYERS when REDIS_URL is set; the tests use the same).

Every live push is a hint sent after a commit ("call 42 changed"): the page or the process that hears it re-reads
the database, and a page that reconnects re-reads everything. So a hint needs no queue, only delivery to whoever
listens now, which is what Redis pub/sub is. channels_redis ships two layers:

- `RedisChannelLayer` keeps a list per channel and a sorted set per group in Redis: a `group_send` is three or
  four round trips (expire old members, read the members, a Lua script that pushes onto each member's list), and
  each listener polls with BRPOP. For a fleet proposing, that was ~1.2 ms of a web process's CPU per proposal
  (its two hints sent and received), an eighth of the process's work (bench/README.md, issue 26).
- `RedisPubSubChannelLayer` (this one): a `group_send` is one PUBLISH, and a process subscribes once per group
  its sockets listen to (~0.2 ms per proposal). channels_redis still calls it beta. What a hint loses with it
  is what a hint may lose: one published while a process's subscription reconnects is not delivered (the
  core layer dropped those too: the send failed); redis-py subscribes again by itself
  (tests/runtime/test_layers.py).

redis-py 8's default socket timeout (5 s) ended idle sockets on the core layer's blocking reads (channels_redis
issue 422); a longer one is kept here for any blocking read.
"""


def redis_channel_layer(url: str) -> dict:
    return {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [{"address": url, "socket_timeout": 15}]},
    }
