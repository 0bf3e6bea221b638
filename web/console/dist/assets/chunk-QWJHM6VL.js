import{a,b,c}from"./chunk-KLSADT2N.js";import"./chunk-MJCFRHEQ.js";export{b as Credentials,c as TestOutcome,a as providerWords};
