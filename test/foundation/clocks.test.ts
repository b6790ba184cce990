/** The clocks tests move time with: each one moves by exactly what it is told. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.js';
import { SystemTestClock } from '../clock.js';

/** `clock.now()` read between two real-time readings: [before, after] brackets it exactly. */
function bracket(clock: { now(): number }): { before: number; value: number; after: number } {
  const before = Date.now();
  const value = clock.now();
  return { before, value, after: Date.now() };
}

describe('test clocks', () => {
  it('ManualClock moves only when told to: advance adds, set jumps', () => {
    const clock = new ManualClock(1_000);
    assert.equal(clock.now(), 1_000);
    clock.advance(250);
    assert.equal(clock.now(), 1_250);
    clock.set(5_000);
    assert.equal(clock.now(), 5_000);
  });

  it('SystemTestClock follows real time', () => {
    const { before, value, after } = bracket(new SystemTestClock());
    assert.ok(value >= before && value <= after, `${value} within [${before}, ${after}]`);
  });

  it('SystemTestClock moves ahead of real time by what advance says', () => {
    const clock = new SystemTestClock();
    clock.advance(60_000);
    clock.advance(1_000);
    const { before, value, after } = bracket(clock);
    assert.ok(value >= before + 61_000 && value <= after + 61_000, `${value - before} ms ahead`);
  });

  it('SystemTestClock jumps to what set says, then follows real time from there', () => {
    const clock = new SystemTestClock();
    const target = Date.UTC(2030, 0, 1);
    const setAt = Date.now();
    clock.set(target);
    const { value, after } = bracket(clock);
    assert.ok(value >= target && value <= target + (after - setAt), `${value - target} ms past the target`);
  });
});
