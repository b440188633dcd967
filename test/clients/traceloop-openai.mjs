// An OpenLLMetry user's program: Traceloop's SDK (@traceloop/node-server-sdk) configured by
// its documented TRACELOOP_BASE_URL / TRACELOOP_HEADERS, instrumenting the OpenAI Node SDK
// (`instrumentModules`, Traceloop's documented way for ES modules), one conversation
// (`withConversation`) running one workflow that asks the OpenAI chat completions API once.
// The OpenAI SDK reaches the server at OPENAI_BASE_URL. Prints the answer as one JSON line.
import OpenAI from "openai";
import * as traceloop from "@traceloop/node-server-sdk";

traceloop.initialize({ appName: "weather-app", disableBatch: true, instrumentModules: { openAI: OpenAI } });

const openai = new OpenAI();
const text = await traceloop.withConversation(process.env.SESSION_ID ?? "", () =>
  traceloop.withWorkflow({ name: "answer-question" }, async () => {
    const completion = await openai.chat.completions.create({
      model: "gpt-4o-mini",
      temperature: 0.2,
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "What is the weather in Lyon?" },
      ],
    });
    return completion.choices[0].message.content;
  }),
);

await traceloop.forceFlush();
console.log(JSON.stringify({ text }));
