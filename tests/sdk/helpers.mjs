// SPDX-License-Identifier: MIT
// Helpers of the SDK suites (conformance.test.mjs, cluster.test.mjs).
import assert from "node:assert/strict";

export const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Expects the call (a promise, or a function making one) to fail with one of the HTTP statuses;
// returns the SDK's HTTPError.
export async function expectHttpError(promiseOrFn, statuses, what) {
  try {
    await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn);
  } catch (err) {
    assert.ok(
      statuses.includes(err?.status),
      `${what}: expected HTTP ${statuses.join(" or ")}, got ${err?.status ?? "no status"}: ${err?.message ?? err}`,
    );
    return err;
  }
  assert.fail(`${what}: expected HTTP ${statuses.join(" or ")}, but the call succeeded`);
}

// Polls fn() every `interval` ms until pred(value) holds; fails with the last value after
// `timeout` ms.
export async function poll(what, fn, pred, timeout, interval) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await fn();
    if (pred(value)) return value;
    if (Date.now() > deadline) {
      assert.fail(
        `timed out after ${timeout} ms waiting for ${what}; last: ${JSON.stringify(value)}`,
      );
    }
    await pause(interval);
  }
}
