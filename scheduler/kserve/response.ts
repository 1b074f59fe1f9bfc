// Infer responses and error bodies over HTTP: JSON, or a JSON header then binary outputs.
import type { InferResponse } from './types.js';
import { jsonArray } from './values.js';

/**
 * The infer response, in the order of `r.outputs`. No binary output: a JSON body
 * (`content-type: application/json`). Any binary output: the JSON header, then the binary outputs'
 * bytes in the order they appear, with `inference-header-content-length` (the JSON's byte length) and
 * `content-type: application/octet-stream`. Header names are lower case, as Node reads and writes them
 * (HTTP header names are case-insensitive; tritonclient and KServe's client read them either way).
 */
export function encodeInferResponse(r: InferResponse): { body: Buffer; headers: Record<string, string> } {
  const binaries: Buffer[] = [];
  const outputs = r.outputs.map((o) => {
    const head = `{"name":${JSON.stringify(o.name)},"datatype":"${o.datatype}","shape":${JSON.stringify(o.shape)}`;
    if (o.region)
      return (
        `${head},"parameters":{"shared_memory_region":${JSON.stringify(o.region.name)},` +
        `"shared_memory_byte_size":${o.data.length}}}`
      );
    if (!o.binary) return `${head},"data":${jsonArray(o.data, o.datatype)}}`;
    binaries.push(o.data);
    return `${head},"parameters":{"binary_data_size":${o.data.length}}}`;
  });
  const top = [`"model_name":${JSON.stringify(r.modelName)}`];
  if (r.modelVersion !== undefined) top.push(`"model_version":${JSON.stringify(r.modelVersion)}`);
  if (r.id !== undefined) top.push(`"id":${JSON.stringify(r.id)}`);
  top.push(`"outputs":[${outputs.join(',')}]`);
  const header = Buffer.from(`{${top.join(',')}}`, 'utf8');
  if (binaries.length === 0) return { body: header, headers: { 'content-type': 'application/json' } };
  return {
    body: Buffer.concat([header, ...binaries]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
  };
}

/** The protocol's error body, `{"error": message}`, for every 4xx/5xx answer. */
export function errorBody(message: string): Buffer {
  return Buffer.from(JSON.stringify({ error: message }));
}
