import{a,b,c}from"./chunk-LIY7AAK3.js";import"./chunk-5PDCGTQH.js";import"./chunk-6NGYIFGY.js";export{b as Credentials,c as TestOutcome,a as providerWords};
