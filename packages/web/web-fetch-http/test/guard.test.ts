// The address guard on its own: refused kinds, IPv4 hidden in IPv6 forms, allowances.
import { describe, expect, it } from 'vitest'
import { AddressGuard, embeddedV4 } from '../src/index.ts'

const strict = new AddressGuard({ allowPrivateNetwork: false, allowedRanges: [] })

describe('AddressGuard', () => {
  it('refuses the non-public ranges by kind', () => {
    expect(strict.refusal('127.0.0.1')).toBe('loopback')
    expect(strict.refusal('127.255.0.9')).toBe('loopback')
    expect(strict.refusal('10.0.0.1')).toBe('private')
    expect(strict.refusal('172.31.255.255')).toBe('private')
    expect(strict.refusal('192.168.1.1')).toBe('private')
    expect(strict.refusal('169.254.169.254')).toBe('link-local')
    expect(strict.refusal('100.64.0.1')).toBe('carrier-grade NAT')
    expect(strict.refusal('0.0.0.0')).toBe('unspecified')
    expect(strict.refusal('224.0.0.251')).toBe('multicast')
    expect(strict.refusal('255.255.255.255')).toBe('reserved')
    expect(strict.refusal('::1')).toBe('loopback')
    expect(strict.refusal('::')).toBe('unspecified')
    expect(strict.refusal('fd12:3456::1')).toBe('private')
    expect(strict.refusal('fe80::1%eth0')).toBe('link-local')
    expect(strict.refusal('ff02::1')).toBe('multicast')
  })

  it('allows public addresses', () => {
    for (const address of ['93.184.216.34', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e'])
      expect(strict.refusal(address), address).toBeUndefined()
  })

  it('finds IPv4 inside IPv6 (mapped, compatible, NAT64, 6to4) and judges it', () => {
    expect(embeddedV4('::ffff:127.0.0.1')).toBe('127.0.0.1')
    expect(embeddedV4('::ffff:7f00:1')).toBe('127.0.0.1')
    expect(embeddedV4('64:ff9b::a00:1')).toBe('10.0.0.1')
    expect(embeddedV4('2002:c0a8:0101::1')).toBe('192.168.1.1')
    expect(embeddedV4('2606:4700::1')).toBeUndefined()
    expect(strict.refusal('::ffff:7f00:1')).toMatch(/^loopback \(IPv4 127\.0\.0\.1 inside IPv6\)$/)
    expect(strict.refusal('64:ff9b::a9fe:a9fe')).toMatch(/^link-local/)
    expect(strict.refusal('2002:0a00:0001::')).toMatch(/^private/)
    expect(strict.refusal('::ffff:93.184.216.34')).toBeUndefined()
  })

  it('allowedRanges open exactly the listed ranges; allowPrivateNetwork opens all', () => {
    const guard = new AddressGuard({ allowPrivateNetwork: false, allowedRanges: ['127.0.0.1/32', '10.1.0.0/16'] })
    expect(guard.refusal('127.0.0.1')).toBeUndefined()
    expect(guard.refusal('::ffff:127.0.0.1')).toBeUndefined()
    expect(guard.refusal('127.0.0.2')).toBe('loopback')
    expect(guard.refusal('10.1.200.3')).toBeUndefined()
    expect(guard.refusal('10.2.0.1')).toBe('private')
    expect(guard.refusal('::1')).toBe('loopback')
    expect(
      new AddressGuard({ allowPrivateNetwork: true, allowedRanges: [] }).refusal('169.254.169.254'),
    ).toBeUndefined()
  })
})
