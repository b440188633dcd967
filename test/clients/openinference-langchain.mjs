// An OpenInference user's LangChain program: the OpenTelemetry Node SDK configured by the
// standard OTEL_* environment variables, OpenInference's LangChain instrumentation registered
// on it (and applied to LangChain's callback manager module by `manuallyInstrument`,
// OpenInference's documented way for ES modules), one chain (a chat prompt piped into
// `ChatOpenAI`) invoked once inside a session (openinference-core's `setSession`). The OpenAI
// client under ChatOpenAI reaches the server at OPENAI_BASE_URL. Prints the answer as one JSON line.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { context } from "@opentelemetry/api";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import { setSession } from "@arizeai/openinference-core";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { ChatOpenAI } from "@langchain/openai";

const instrumentation = new LangChainInstrumentation();
instrumentation.manuallyInstrument(CallbackManagerModule);
const sdk = new NodeSDK({ instrumentations: [instrumentation] });
sdk.start();

const prompt = ChatPromptTemplate.fromMessages([
  ["system", "Answer briefly."],
  ["human", "What is the weather in {city}?"],
]);
const chain = prompt.pipe(new ChatOpenAI({ model: "gpt-4o-mini", temperature: 0.2 }));
const message = await context.with(setSession(context.active(), { sessionId: process.env.SESSION_ID ?? "" }), () => chain.invoke({ city: "Lyon" }));
await sdk.shutdown();
console.log(JSON.stringify({ text: message.content }));
