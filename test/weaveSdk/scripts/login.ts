import * as weave from "weave";

/** weave.login with a key and the service's host: it checks the key against the trace server and saves it in ~/.netrc. */
await weave.login(process.env.SDK_LOGIN_KEY!, new URL(process.env.WANDB_BASE_URL!).host);
console.log(JSON.stringify({ loggedIn: true }));
