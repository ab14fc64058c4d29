// Only for core/identity/redis_state_test.ts, which still imports it from here: the tests' own
// redis-server is in testing/redis.ts (testing/mod.ts), which the bench starts too.
export { REDIS_SERVER, startRedis, type TestRedis } from "../testing/mod.ts";
