import { generateText, streamText, tool, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('ai');
const openai = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: 'sk-test' });
const FORECASTS = { paris: 'Paris: 18°C, sunny', tokyo: 'Tokyo: 24°C, cloudy' };

const run = process.env.MODE === 'stream' ? streamText : generateText;
const result = await run({
  model: openai.chat('gpt-4o-mini'),
  system: process.env.SYSTEM,
  prompt: process.env.QUESTION,
  tools: {
    get_weather: tool({
      description: 'Get the current weather in a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => FORECASTS[city.toLowerCase()],
    }),
    convert_temperature: tool({
      description: 'Convert a temperature in degrees Celsius to another unit.',
      inputSchema: z.object({ celsius: z.number(), to: z.string() }),
      execute: async ({ celsius, to }) => `${celsius}°C is ${Math.round((celsius * 9 / 5 + 32) * 100) / 100}°F`,
    }),
  },
  stopWhen: stepCountIs(5),
  experimental_telemetry: { isEnabled: true, functionId: 'weather-bot', tracer },
});
await result.text;
await provider.forceFlush();

const hex = (s) => s;
const value = (v) => {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(value) } };
  return { stringValue: JSON.stringify(v) };
};
const attrs = (o) => Object.entries(o || {}).map(([key, v]) => ({ key, value: value(v) }));
const ns = ([s, n]) => String(BigInt(s) * 1000000000n + BigInt(n));
const spans = exporter.getFinishedSpans().map((s) => {
  const ctx = s.spanContext();
  const parent = s.parentSpanContext?.spanId ?? s.parentSpanId;
  return {
    traceId: ctx.traceId, spanId: ctx.spanId, ...(parent ? { parentSpanId: parent } : {}),
    name: s.name, kind: s.kind + 1, startTimeUnixNano: ns(s.startTime), endTimeUnixNano: ns(s.endTime),
    attributes: attrs(s.attributes),
    events: s.events.map((e) => ({ name: e.name, timeUnixNano: ns(e.time), attributes: attrs(e.attributes) })),
    status: s.status.message ? { code: s.status.code, message: s.status.message } : { code: s.status.code },
  };
});
const doc = { resourceSpans: [{ resource: { attributes: attrs({ 'service.name': 'weather-bot-node' }) },
  scopeSpans: [{ scope: { name: 'ai' }, spans }] }] };
process.stderr.write((await result.text) + '\n');
process.stdout.write(JSON.stringify(doc));
