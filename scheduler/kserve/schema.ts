// The request's JSON shape. Not .strict(): clients send fields inss has no use for (KServe's client
// sends `model_name`; tritonclient sends `priority`, `timeout`, `sequence_id` parameters), and the
// protocol lets them. Parameters are read one by one below, where their meaning is known.
import { z } from 'zod';

const Parameters = z.record(z.string(), z.unknown()).optional();
const Shape = z.array(
  z
    .number({ error: 'expected a number' })
    .int({ error: 'expected an integer' })
    .nonnegative({ error: 'expected a dimension >= 0' }),
);
const RequestInput = z.object({
  name: z.string(),
  shape: Shape,
  datatype: z.string(),
  parameters: Parameters,
  data: z.array(z.unknown(), { error: 'expected an array (flat or nested) of values' }).optional(),
});
const RequestOutput = z.object({ name: z.string(), parameters: Parameters });
export const RequestSchema = z.object(
  {
    id: z.string().optional(),
    parameters: Parameters,
    inputs: z.array(RequestInput),
    outputs: z.array(RequestOutput).optional(),
  },
  { error: 'expected a JSON object (an inference request)' },
);
export type RequestJson = z.infer<typeof RequestSchema>;
