#!/usr/bin/python3
"""The other side of the amqp-interop suite: an AMQP client nobody in this project wrote.

Debian's python3-pika (1.2) publishes and reads messages the way another AceMQ member
would, so tests/amqp/test_interop.cpp can check acemq-cpp against the wire rather than
against itself. Run by /usr/bin/python3 (the interpreter that has pika). The broker URL is
read from ACEMQ_TEST_AMQP_URL, never from the command line.

  interop_peer.py publish --fixtures FILE --exchange EX [--extra]
      Publishes every case of the envelope fixture (and, with --extra, one "set aside"
      message carrying the headers the fixture has no case for) to EX with the case's
      routing key, exactly as the Java member writes it. Prints, as JSON, the AMQP type
      letter of every header as pika encoded it.

  interop_peer.py send --queue Q --content-type TYPE --message-id ID --body TEXT
      Publishes one message with body TEXT (UTF-8) to Q through the default exchange, as
      another member's service would send a document of its own. Prints {"sent": ID}.

  interop_peer.py get --queue Q --count N [--timeout SECONDS]
      Takes N messages off Q with basic.get (acking each), waiting up to SECONDS for them.
      Prints a JSON array, one object per message: properties, every header with the type
      letter read from the raw header table, and the body (base64, plus the decoded value
      for application/json and application/msgpack).

Exit status 0 on success; anything else (a missing variable, a timeout, a broker error)
is 1 with the reason on stderr.
"""

import argparse
import base64
import json
import os
import struct
import sys
import time

import pika
import pika.compat
import pika.data

# ---- AMQP field tables, read with their type letters -------------------------------------
#
# pika hands headers over as Python values, which forget whether an integer travelled as
# 'I' (signed 32) or 'l' (signed 64). This reader walks the raw bytes of a table and keeps
# the letter next to each value. It is written from the AMQP 0-9-1 grammar as RabbitMQ reads
# it (the errata: 'l' is a signed 64-bit integer), independent of pika's decoder.

_FIXED = {
    b't': ('>B', lambda v: bool(v)),
    b'b': ('>b', None),   # signed 8
    b'B': ('>B', None),   # unsigned 8
    b's': ('>h', None),   # signed 16
    b'u': ('>H', None),   # unsigned 16
    b'I': ('>i', None),   # signed 32
    b'i': ('>I', None),   # unsigned 32
    b'l': ('>q', None),   # signed 64
    b'f': ('>f', None),
    b'd': ('>d', None),
    b'T': ('>Q', None),   # timestamp, seconds
}


def _typed_value(raw, offset):
    kind = raw[offset:offset + 1]
    offset += 1
    if kind in _FIXED:
        fmt, convert = _FIXED[kind]
        (value,) = struct.unpack_from(fmt, raw, offset)
        offset += struct.calcsize(fmt)
        return {'type': kind.decode(), 'value': convert(value) if convert else value}, offset
    if kind in (b'S', b'x'):
        (length,) = struct.unpack_from('>I', raw, offset)
        offset += 4
        data = bytes(raw[offset:offset + length])
        offset += length
        if kind == b'S':
            try:
                return {'type': 'S', 'value': data.decode('utf-8')}, offset
            except UnicodeDecodeError:
                pass
        return {'type': kind.decode(), 'base64': base64.b64encode(data).decode()}, offset
    if kind == b'D':
        scale, unscaled = struct.unpack_from('>Bi', raw, offset)
        return {'type': 'D', 'value': unscaled / (10 ** scale)}, offset + 5
    if kind == b'F':
        table, offset = typed_table(raw, offset)
        return {'type': 'F', 'value': table}, offset
    if kind == b'A':
        (length,) = struct.unpack_from('>I', raw, offset)
        offset += 4
        end, items = offset + length, []
        while offset < end:
            item, offset = _typed_value(raw, offset)
            items.append(item)
        return {'type': 'A', 'value': items}, offset
    if kind == b'V':
        return {'type': 'V', 'value': None}, offset
    raise ValueError('unknown AMQP field type %r at offset %d' % (kind, offset - 1))


def typed_table(raw, offset=0):
    """A field table at `offset` as {name: {'type': letter, 'value': ...}}, and the offset after it."""
    (size,) = struct.unpack_from('>I', raw, offset)
    offset += 4
    end, table = offset + size, {}
    while offset < end:
        (name_length,) = struct.unpack_from('>B', raw, offset)
        offset += 1
        name = bytes(raw[offset:offset + name_length]).decode('utf-8')
        offset += name_length
        table[name], offset = _typed_value(raw, offset)
    if offset != end:
        raise ValueError('field table overran its declared size')
    return table, offset


# Every table pika decodes passes through pika.data.decode_table (spec.py calls it through the
# module, so replacing the module attribute catches it). The wrapper keeps, for each dict it
# returns, the typed reading of the same bytes; a message's headers dict is then looked up by
# identity. Entries are kept alive, so an id() is never reused while this script runs.
_typed_tables = {}
_pika_decode_table = pika.data.decode_table


def _recording_decode_table(encoded, offset):
    result, end = _pika_decode_table(encoded, offset)
    typed, typed_end = typed_table(encoded, offset)
    if typed_end != end:
        raise ValueError('pika and this reader disagree on where a field table ends')
    _typed_tables[id(result)] = (result, typed)
    return result, end


pika.data.decode_table = _recording_decode_table


def typed_headers_of(properties):
    if properties.headers is None:
        return {}
    entry = _typed_tables.get(id(properties.headers))
    if entry is None or entry[0] is not properties.headers:
        raise RuntimeError('no raw header table was recorded for this message')
    return entry[1]


# ---- MessagePack, the C++ default codec: just enough of it to read what acemq-cpp writes ----

def _msgpack_value(raw, offset):
    marker = raw[offset]
    offset += 1
    if marker <= 0x7f:
        return marker, offset
    if marker >= 0xe0:
        return marker - 0x100, offset
    if 0x80 <= marker <= 0x8f:
        return _msgpack_map(raw, offset, marker & 0x0f)
    if 0x90 <= marker <= 0x9f:
        return _msgpack_array(raw, offset, marker & 0x0f)
    if 0xa0 <= marker <= 0xbf:
        return _msgpack_str(raw, offset, marker & 0x1f)
    if marker == 0xc0:
        return None, offset
    if marker in (0xc2, 0xc3):
        return marker == 0xc3, offset
    sized = {0xcc: '>B', 0xcd: '>H', 0xce: '>I', 0xcf: '>Q', 0xd0: '>b', 0xd1: '>h', 0xd2: '>i',
             0xd3: '>q', 0xca: '>f', 0xcb: '>d'}
    if marker in sized:
        (value,) = struct.unpack_from(sized[marker], raw, offset)
        return value, offset + struct.calcsize(sized[marker])
    lengths = {0xd9: '>B', 0xda: '>H', 0xdb: '>I', 0xc4: '>B', 0xc5: '>H', 0xc6: '>I',
               0xdc: '>H', 0xdd: '>I', 0xde: '>H', 0xdf: '>I'}
    if marker in lengths:
        (length,) = struct.unpack_from(lengths[marker], raw, offset)
        offset += struct.calcsize(lengths[marker])
        if marker in (0xd9, 0xda, 0xdb):
            return _msgpack_str(raw, offset, length)
        if marker in (0xc4, 0xc5, 0xc6):
            return {'bin_base64': base64.b64encode(bytes(raw[offset:offset + length])).decode()}, offset + length
        if marker in (0xdc, 0xdd):
            return _msgpack_array(raw, offset, length)
        return _msgpack_map(raw, offset, length)
    raise ValueError('msgpack marker 0x%02x is not read here' % marker)


def _msgpack_str(raw, offset, length):
    return bytes(raw[offset:offset + length]).decode('utf-8'), offset + length


def _msgpack_array(raw, offset, count):
    items = []
    for _ in range(count):
        item, offset = _msgpack_value(raw, offset)
        items.append(item)
    return items, offset


def _msgpack_map(raw, offset, count):
    out = {}
    for _ in range(count):
        key, offset = _msgpack_value(raw, offset)
        out[str(key)], offset = _msgpack_value(raw, offset)
    return out, offset


def msgpack_decode(raw):
    value, end = _msgpack_value(raw, 0)
    if end != len(raw):
        raise ValueError('%d trailing bytes after the msgpack value' % (len(raw) - end))
    return value


# ---- the commands ------------------------------------------------------------------------

def connect():
    url = os.environ.get('ACEMQ_TEST_AMQP_URL', '')
    if not url:
        raise RuntimeError('ACEMQ_TEST_AMQP_URL is not set: start the test broker '
                           '(source scripts/servers.sh; start_rabbitmq)')
    parameters = pika.URLParameters(url)
    parameters.connection_attempts = 3
    parameters.retry_delay = 1
    parameters.socket_timeout = 10
    parameters.blocked_connection_timeout = 30
    return pika.BlockingConnection(parameters)


# Integer headers by the width the family writes them (docs/wire-contract.md §2.2):
# epoch-millisecond stamps as signed 64 ('l'), counters and positions as signed 32 ('I').
# pika picks the width of a plain int by its magnitude ('I' when it fits in 32 bits, else
# 'l'), so the 64-bit ones are wrapped in pika.compat.long, pika's marker for "always 'l'",
# and the 32-bit ones are checked to fit rather than left to silently widen.
WIDE_INTEGER_HEADERS = {'x-acemq-first-seen', 'acemq-replayed-at'}


def java_header_value(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError('header %s: the family writes only strings and integers, not %r' % (name, value))
    if isinstance(value, str):
        return value
    if name in WIDE_INTEGER_HEADERS:
        return pika.compat.long(value)
    if not -2 ** 31 <= value < 2 ** 31:
        raise ValueError('header %s: %d does not fit the signed 32-bit field the family writes' % (name, value))
    return int(value)


# A message as an engine leaves it in {queue}.dlq, with the headers the fixture has no case
# for: the error text, a claim-check key, a declared route, trace context.
SET_ASIDE_CASE = {
    'case': 'set-aside',
    'routingKey': 'fx.set-aside',
    'messageId': 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
    'body': json.dumps('{"id":"o-4"}'),  # a String payload, as Java encodes one
    'contentType': 'application/json',
    'headers': {
        'traceparent': '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        'x-acemq-attempt': 3,
        'x-acemq-claim': 'claims/o-4',
        'x-acemq-correlation': 'corr-4',
        'x-acemq-error': 'exhausted 3 attempts: RuntimeError: stock service down',
        'x-acemq-first-seen': 1767323045678,
        'x-acemq-id': 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
        'x-acemq-origin': 'orders@host-7',
        'x-acemq-route': 'validate,price,ship',
        'x-acemq-route-id': 'route-9',
        'x-acemq-route-position': 1,
        'x-acemq-type': 'order.placed',
        'x-acemq-version': 2,
    },
}


def wire_types(headers):
    """The type letter pika puts on the wire for each header, read back from pika's own encoding."""
    pieces = []
    pika.data.encode_table(pieces, headers)
    typed, _ = typed_table(b''.join(pieces))
    return {name: entry['type'] for name, entry in typed.items()}


def publish(arguments):
    with open(arguments.fixtures, encoding='utf-8') as file:
        cases = json.load(file)['cases']
    if arguments.extra:
        cases = cases + [SET_ASIDE_CASE]
    connection = connect()
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        sent = {}
        for case in cases:
            headers = {name: java_header_value(name, value) for name, value in case['headers'].items()}
            properties = pika.BasicProperties(content_type=case['contentType'], message_id=case['messageId'],
                                              delivery_mode=2, headers=headers)
            # With confirms on, basic_publish raises when the broker nacks or returns the message.
            channel.basic_publish(exchange=arguments.exchange, routing_key=case['routingKey'],
                                  body=case['body'].encode('utf-8'), properties=properties, mandatory=True)
            sent[case['case']] = {'messageId': case['messageId'], 'headerTypes': wire_types(headers)}
    finally:
        connection.close()
    json.dump({'published': sent}, sys.stdout, sort_keys=True)
    sys.stdout.write('\n')


def send(arguments):
    connection = connect()
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        properties = pika.BasicProperties(content_type=arguments.content_type, message_id=arguments.message_id,
                                          delivery_mode=2)
        channel.basic_publish(exchange='', routing_key=arguments.queue, body=arguments.body.encode('utf-8'),
                              properties=properties, mandatory=True)
    finally:
        connection.close()
    json.dump({'sent': arguments.message_id}, sys.stdout)
    sys.stdout.write('\n')


def describe(method, properties, body):
    out = {
        'exchange': method.exchange,
        'routingKey': method.routing_key,
        'redelivered': method.redelivered,
        'properties': {
            'contentType': properties.content_type,
            'contentEncoding': properties.content_encoding,
            'messageId': properties.message_id,
            'deliveryMode': properties.delivery_mode,
            'replyTo': properties.reply_to,
            'correlationId': properties.correlation_id,
            'type': properties.type,
            'timestamp': properties.timestamp,
            'appId': properties.app_id,
            'userId': properties.user_id,
            'expiration': properties.expiration,
            'priority': properties.priority,
        },
        'headers': typed_headers_of(properties),
        # What pika's own decoder made of the same table, so both readings can be compared.
        'pikaHeaders': {name: (value.decode('latin-1') if isinstance(value, bytes) else value)
                        for name, value in (properties.headers or {}).items()},
        'bodyBase64': base64.b64encode(body).decode(),
    }
    content_type = (properties.content_type or '').lower()
    if content_type.startswith('application/json') or not content_type:
        out['bodyJson'] = json.loads(body.decode('utf-8'))
    elif content_type.startswith('application/msgpack'):
        out['bodyMsgpack'] = msgpack_decode(body)
    return out


def get(arguments):
    connection = connect()
    received = []
    try:
        channel = connection.channel()
        deadline = time.monotonic() + arguments.timeout
        while len(received) < arguments.count:
            method, properties, body = channel.basic_get(arguments.queue, auto_ack=False)
            if method is None:
                if time.monotonic() >= deadline:
                    raise TimeoutError('%d of %d messages arrived in %s within %s s'
                                       % (len(received), arguments.count, arguments.queue, arguments.timeout))
                connection.sleep(0.05)
                continue
            received.append(describe(method, properties, body))
            channel.basic_ack(method.delivery_tag)
    finally:
        connection.close()
    json.dump(received, sys.stdout, sort_keys=True)
    sys.stdout.write('\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    publish_command = commands.add_parser('publish')
    publish_command.add_argument('--fixtures', required=True)
    publish_command.add_argument('--exchange', required=True)
    publish_command.add_argument('--extra', action='store_true')
    publish_command.set_defaults(run=publish)
    send_command = commands.add_parser('send')
    send_command.add_argument('--queue', required=True)
    send_command.add_argument('--content-type', required=True)
    send_command.add_argument('--message-id', required=True)
    send_command.add_argument('--body', required=True)
    send_command.set_defaults(run=send)
    get_command = commands.add_parser('get')
    get_command.add_argument('--queue', required=True)
    get_command.add_argument('--count', type=int, required=True)
    get_command.add_argument('--timeout', type=float, default=20.0)
    get_command.set_defaults(run=get)
    arguments = parser.parse_args()
    try:
        arguments.run(arguments)
    except Exception as error:  # reported to the C++ test through stderr and the exit status
        print('interop_peer: %s: %s' % (type(error).__name__, error), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
