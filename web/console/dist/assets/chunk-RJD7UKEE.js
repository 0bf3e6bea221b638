import{a,b,c}from"./chunk-Y3TYTKFO.js";import"./chunk-QKBHUYPO.js";import"./chunk-NMEPM3UC.js";export{b as Credentials,c as TestOutcome,a as providerWords};
