#!/usr/bin/python3
"""Debian's python3-pika doing what amqp_bench does, against the same RabbitMQ, on a queue
set up as amqp_bench's (classic, durable), with the same JSON payload, persistent and
mandatory, publisher confirms on:
  1. one confirmed publish at a time (BlockingChannel with confirm_delivery: basic_publish
     returns once the broker's basic.ack is in), p50 and p99;
  2. 1,000 published with confirms, then waited for (SelectConnection: publish all, count
     the basic.acks, `multiple` ones included), ms per 1,000, the median of the repetitions;
  3. consuming 10,000 messages, prefetch 100, one basic.ack each, ms, the median.
Figures only, never asserted on. With $ACEMQ_BENCH_JSON set (bench/run sets it), each
figure is recorded there, and each is set beside amqp_bench's figure for the same work when
amqp_bench has recorded it in that file already (bench/run runs amqp_bench first): those
are the "against python3-pika" rows of bench/run's table.

  bench/pika_bench.py [URL] [--quick]   (or ACEMQ_BENCH_QUICK=1)

URL: argv, else $ACEMQ_TEST_AMQP_URL, else amqp://guest:guest@127.0.0.1:5672/.
"""
import json
import os
import statistics
import sys
import time

import pika
from pika.spec import Basic

QUEUE = "acemq.bench.pika"
# What amqp_bench's Publisher::send puts in the body: Order{"o-1", 42.0} through JsonCodec.
BODY = b'{"id":"o-1","total":4.2E1}'
PROPERTIES = pika.BasicProperties(content_type="application/json", delivery_mode=2)
BATCH = 1000
CONSUME = 10_000
PREFETCH = 100


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(int(fraction * (len(ordered) - 1) + 0.5), len(ordered) - 1)
    return ordered[index]


def declare(channel):
    channel.queue_declare(QUEUE, durable=True, arguments={"x-queue-type": "classic"})


def single(parameters, rounds, iterations):
    """p50 and p99 of one confirmed publish, in µs, over every round."""
    connection = pika.BlockingConnection(parameters)
    channel = connection.channel()
    channel.confirm_delivery()
    declare(channel)
    for _ in range(300):  # warm-up, as amqp_bench's
        channel.basic_publish("", QUEUE, BODY, PROPERTIES, mandatory=True)
    channel.queue_purge(QUEUE)
    samples = []
    for _ in range(rounds):
        for _ in range(50):
            channel.basic_publish("", QUEUE, BODY, PROPERTIES, mandatory=True)
        for _ in range(iterations):
            start = time.perf_counter()
            # Raises UnroutableError or NackError: a confirm that is not an ack ends the bench.
            channel.basic_publish("", QUEUE, BODY, PROPERTIES, mandatory=True)
            samples.append((time.perf_counter() - start) * 1e6)
        channel.queue_purge(QUEUE)
    connection.close()
    return percentile(samples, 0.5), percentile(samples, 0.99)


class Batches:
    """Publishes `count` messages, then waits for all their confirms, `repetitions` times,
    on pika's asynchronous connection (its BlockingChannel waits for each confirm)."""

    def __init__(self, parameters, count, repetitions):
        self.count, self.left = count, repetitions
        self.published = self.confirmed_through = 0
        self.out_of_order = set()
        self.target = 0
        self.started = 0.0
        self.ms = []
        self.failure = None
        self.channel = None
        self.connection = pika.SelectConnection(parameters, on_open_callback=self.opened,
                                                on_open_error_callback=self.fail_to_open)

    def run(self):
        self.connection.ioloop.start()
        if self.failure:
            raise RuntimeError(self.failure)
        return statistics.median(self.ms)

    def fail_to_open(self, _connection, error):
        self.failure = f"cannot connect: {error}"
        self.connection.ioloop.stop()

    def opened(self, connection):
        connection.channel(on_open_callback=self.channel_opened)

    def channel_opened(self, channel):
        self.channel = channel
        channel.add_on_return_callback(self.returned)
        channel.confirm_delivery(self.confirm, callback=lambda _: self.next_batch())

    def next_batch(self):
        if self.left == 0:
            self.connection.close()
            self.connection.ioloop.stop()
            return
        self.left -= 1
        self.target = self.published + self.count
        self.started = time.perf_counter()
        for _ in range(self.count):
            self.channel.basic_publish("", QUEUE, BODY, PROPERTIES, mandatory=True)
        self.published = self.target

    def confirm(self, frame):
        method = frame.method
        if isinstance(method, Basic.Nack):
            self.stop("the broker sent basic.nack")
            return
        tag = method.delivery_tag
        if method.multiple:
            self.confirmed_through = max(self.confirmed_through, tag)
            self.out_of_order = {t for t in self.out_of_order if t > self.confirmed_through}
        elif tag > self.confirmed_through:
            self.out_of_order.add(tag)
        while self.confirmed_through + 1 in self.out_of_order:
            self.confirmed_through += 1
            self.out_of_order.discard(self.confirmed_through)
        if self.confirmed_through >= self.target and self.target > 0:
            self.ms.append((time.perf_counter() - self.started) * 1e3)
            self.target = 0
            self.channel.queue_purge(QUEUE, callback=lambda _: self.next_batch())

    def returned(self, _channel, _method, _properties, _body):
        self.stop("the broker returned a publish as unroutable")

    def stop(self, why):
        self.failure = why
        self.connection.close()
        self.connection.ioloop.stop()


def consume(parameters, repetitions):
    """ms to consume CONSUME messages, prefetch PREFETCH, one ack each; the median."""
    connection = pika.BlockingConnection(parameters)
    channel = connection.channel()
    channel.confirm_delivery()
    declare(channel)
    channel.queue_purge(QUEUE)
    channel.basic_qos(prefetch_count=PREFETCH)
    ms = []
    filler = connection.channel()  # no confirms: filling is untimed, the queue's count says when it is done
    for _ in range(repetitions):
        for _ in range(CONSUME):
            filler.basic_publish("", QUEUE, BODY, PROPERTIES)
        deadline = time.monotonic() + 60
        while channel.queue_declare(QUEUE, passive=True).method.message_count < CONSUME:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {CONSUME} messages to consume did not all reach {QUEUE} in 60 s")
            time.sleep(0.01)
        received = 0

        def on_message(ch, method, _properties, _body):
            nonlocal received
            ch.basic_ack(method.delivery_tag)
            received += 1
            if received == CONSUME:
                ch.stop_consuming()

        start = time.perf_counter()
        tag = channel.basic_consume(QUEUE, on_message)
        channel.start_consuming()
        ms.append((time.perf_counter() - start) * 1e3)
        channel.basic_cancel(tag)
        channel.queue_purge(QUEUE)
    connection.close()
    return statistics.median(ms)


def read_json_lines(path):
    figures = {}
    try:
        with open(path) as lines:
            for line in lines:
                entry = json.loads(line)
                if entry.get("kind") == "figure":
                    figures[entry["key"]] = entry["value"]
    except FileNotFoundError:
        pass
    return figures


def main():
    arguments = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv[1:] or os.environ.get("ACEMQ_BENCH_QUICK", "0") not in ("", "0")
    if any(a.startswith("--") for a in arguments) or len(arguments) > 1:
        print(f"usage: {sys.argv[0]} [URL] [--quick]   (or ACEMQ_BENCH_QUICK=1)", file=sys.stderr)
        return 2
    url = (arguments[0] if arguments else os.environ.get("ACEMQ_TEST_AMQP_URL")
           or "amqp://guest:guest@127.0.0.1:5672/")
    rounds, iterations, batches, consumes = (3, 300, 3, 1) if quick else (10, 1000, 5, 3)
    parameters = pika.URLParameters(url)
    print(f"python3-pika {pika.__version__}, {'quick' if quick else 'full'}; payload {BODY.decode()}, "
          "persistent, mandatory, confirms on; classic durable queue")
    try:
        pika.BlockingConnection(parameters).close()
    except pika.exceptions.AMQPConnectionError as error:
        print(f"pika_bench: no RabbitMQ answers at {parameters.host}:{parameters.port} ({error!r}).\n"
              "Start one (source scripts/servers.sh; start_rabbitmq) or pass its URL as the first argument.",
              file=sys.stderr)
        return 1
    try:
        p50, p99 = single(parameters, rounds, iterations)
        print(f"  one confirmed publish at a time, {rounds} x {iterations}: p50 {p50:.1f} us, p99 {p99:.1f} us",
              flush=True)
        batch_ms = Batches(parameters, BATCH, batches).run()
        print(f"  {BATCH} published, then their confirms: {batch_ms:.2f} ms (median of {batches})", flush=True)
        consume_ms = consume(parameters, consumes)
        print(f"  consume {CONSUME}, prefetch {PREFETCH}, ack each: {consume_ms:.1f} ms "
              f"({CONSUME / consume_ms * 1e3:.0f} msg/s, median of {consumes})", flush=True)
    finally:
        try:
            connection = pika.BlockingConnection(parameters)
            connection.channel().queue_delete(QUEUE)
            connection.close()
        except pika.exceptions.AMQPError as error:
            print(f"pika_bench: could not delete queue {QUEUE}: {error}", file=sys.stderr)

    json_path = os.environ.get("ACEMQ_BENCH_JSON")
    if not json_path:
        return 0
    ours = read_json_lines(json_path)
    command = " ".join(sys.argv)
    with open(json_path, "a") as out:
        for key, value, unit in (("pika.single.p50", p50, "us"), ("pika.batch", batch_ms, "ms"),
                                 ("pika.consume", consume_ms, "ms")):
            out.write(json.dumps({"kind": "figure", "key": key, "value": value, "unit": unit,
                                  "command": command}) + "\n")
        for name, key, value, unit in (
                ("AMQP one confirmed Publisher::send, p50, classic queue", "amqp.classic.single.send.p50", p50, "us"),
                ("AMQP send_all(1000), classic queue", "amqp.classic.batch.send_all", batch_ms, "ms"),
                ("AMQP consume 10,000, prefetch 100, ack each", "amqp.consume.consumer", consume_ms, "ms")):
            if key not in ours:
                print(f"pika_bench: no {key} from amqp_bench in {json_path}: its row against pika is left out",
                      file=sys.stderr)
                continue
            out.write(json.dumps({"kind": "row", "name": name, "ours": ours[key],
                                  "against": "python3-pika doing the same", "underneath": value, "unit": unit,
                                  "ratio": ours[key] / value, "aim": None, "better": "lower",
                                  "command": command}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
