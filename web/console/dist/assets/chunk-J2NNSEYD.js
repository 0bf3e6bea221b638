import{a,b,c}from"./chunk-Z5KUL2J4.js";import"./chunk-GX7B5VC5.js";import"./chunk-T2V2SINW.js";export{b as Credentials,c as TestOutcome,a as providerWords};
